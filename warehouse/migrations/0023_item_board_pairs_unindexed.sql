-- item_board_pairs without its primary key (issue: cost that tracks the work). The table is
-- rewritten whole on every item-board build, and a board of n entries has n(n-1)/2 pairs: at
-- 50x the recorded data, 1.56M rows whose key index doubled the table's size on disk (about
-- 150 MB) and more than doubled the cost of writing it, committing it and copying it for
-- analysts. The key stays enforced where rows are published: a release refuses a table whose
-- declared key (board, entry_key_a, entry_key_b) repeats, before anything is written.
CREATE TABLE item_board_pairs_new (
    board          VARCHAR NOT NULL,
    entry_a        VARCHAR NOT NULL,
    entry_b        VARCHAR NOT NULL,
    items          BIGINT NOT NULL,
    discordant     BIGINT NOT NULL,
    p_value        DOUBLE NOT NULL,
    significant    BOOLEAN NOT NULL,
    better         VARCHAR,
    dominates      VARCHAR,
    wins_a         BIGINT NOT NULL,
    wins_b         BIGINT NOT NULL,
    entry_key_a    VARCHAR NOT NULL,
    entry_key_b    VARCHAR NOT NULL
);
INSERT INTO item_board_pairs_new SELECT * FROM item_board_pairs;
DROP TABLE item_board_pairs;
ALTER TABLE item_board_pairs_new RENAME TO item_board_pairs;
