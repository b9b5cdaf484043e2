-- The rest of each item board's reporting card (`scores/card.py`, RANKS definitions):
-- per board, the figures the card computed but did not publish (α, adjacent pairs left
-- undecided, the top decile's size and discordance shares, the pair test, how the
-- resolution was simulated, the self-checks that passed, and the software and command that
-- computed it); per entry, its tier in the partial order of established pairs; per pair,
-- the difference, its standard deviation, κ and the smallest gap it could separate at 80%
-- power. Columns are appended, in published order (`release/published.py`); the tables are
-- rewritten whole by every item-board build, so existing rows need no value.
ALTER TABLE item_board_cards ADD COLUMN alpha DOUBLE;
ALTER TABLE item_board_cards ADD COLUMN adjacent_pairs BIGINT;
ALTER TABLE item_board_cards ADD COLUMN adjacent_undecided BIGINT;
ALTER TABLE item_board_cards ADD COLUMN top_decile_entries BIGINT;
ALTER TABLE item_board_cards ADD COLUMN discordance_share DOUBLE;
ALTER TABLE item_board_cards ADD COLUMN discordance_top_decile_share DOUBLE;
ALTER TABLE item_board_cards ADD COLUMN pair_test VARCHAR;
ALTER TABLE item_board_cards ADD COLUMN resolution_threshold DOUBLE;
ALTER TABLE item_board_cards ADD COLUMN resolution_replicates BIGINT;
ALTER TABLE item_board_cards ADD COLUMN self_checks VARCHAR;
ALTER TABLE item_board_cards ADD COLUMN software VARCHAR;
ALTER TABLE item_board_cards ADD COLUMN command VARCHAR;
ALTER TABLE item_board_rank_sets ADD COLUMN tier BIGINT;
ALTER TABLE item_board_pairs ADD COLUMN difference DOUBLE;
ALTER TABLE item_board_pairs ADD COLUMN sd DOUBLE;
ALTER TABLE item_board_pairs ADD COLUMN kappa DOUBLE;
ALTER TABLE item_board_pairs ADD COLUMN smallest_separable_gap DOUBLE;

-- The Navigator Index's own resolution (`scores/navigator_power.py`): the index gaps, in
-- points, its data separates half the time and four times in five, by simulation from its
-- pairs at the board's Holm threshold; one row, none while fewer than two models are indexed.
CREATE TABLE navigator_resolution (
    models      BIGINT NOT NULL,
    tasks       BIGINT NOT NULL,
    gap_50      DOUBLE,
    gap_80      DOUBLE,
    threshold   DOUBLE NOT NULL,
    replicates  BIGINT NOT NULL,
    test        VARCHAR NOT NULL,
    simulated   BOOLEAN NOT NULL
);
