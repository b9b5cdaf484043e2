"""The `bench` command: running the pipeline, operator actions and the blind review flow."""
