-- click_segments records how far each segment of each instance's click
-- journal is counted (a byte position). A batch is counted only from its
-- segment's recorded position and moves it in the same transaction, so a
-- batch replayed after a crash is never counted twice. Rows of deleted
-- segments are forgotten.
CREATE TABLE IF NOT EXISTS click_segments (
    journal_id  BIGINT       NOT NULL,
    segment     BIGINT       NOT NULL,
    node_id     INT          NOT NULL,
    shipped_to  BIGINT       NOT NULL,
    updated_at  DATETIME(3)  NOT NULL,
    PRIMARY KEY (journal_id, segment)
) ENGINE=InnoDB;
