-- Parity before rank (`scores/parity.py`): an item-board entry whose score from its per-item
-- results disagrees with its published score at the published rounding is listed with both
-- numbers and this reason, and has no rank range.
ALTER TABLE item_boards ADD COLUMN parity VARCHAR;
