"""Schedules and sensors."""
