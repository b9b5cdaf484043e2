-- The reporting card of each item board (`scores/card.py`), recomputed with the boards on
-- every run: one row per board (shape, hash, pairs established, tiers, discordance,
-- resolution) and one per ranked entry (its bootstrap rank sets, over items and over the
-- instances' repositories). Columns in published order (`release/published.py`).
CREATE TABLE item_board_cards (
    board                    VARCHAR NOT NULL PRIMARY KEY,
    systems                  BIGINT NOT NULL,
    items                    BIGINT NOT NULL,
    data_type                VARCHAR NOT NULL,
    matrix_sha256            VARCHAR NOT NULL,
    missing_cells            BIGINT NOT NULL,
    groups                   BIGINT,
    draws                    BIGINT NOT NULL,
    seed                     BIGINT NOT NULL,
    pairs_total              BIGINT NOT NULL,
    pairs_established        BIGINT NOT NULL,
    established_share        DOUBLE,
    tiers_height             BIGINT NOT NULL,
    largest_antichain        BIGINT NOT NULL,
    discordance              DOUBLE,
    discordance_top_decile   DOUBLE,
    resolution_gap_50        DOUBLE,
    resolution_gap_80        DOUBLE
);

CREATE TABLE item_board_rank_sets (
    board                VARCHAR NOT NULL,
    entry_key            VARCHAR NOT NULL,
    rank_set_low         BIGINT NOT NULL,
    rank_set_high        BIGINT NOT NULL,
    group_rank_set_low   BIGINT,
    group_rank_set_high  BIGINT,
    PRIMARY KEY (board, entry_key)
);
