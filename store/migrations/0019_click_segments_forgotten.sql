-- click_segments_forgotten remembers, per journal, the last segment whose
-- position was forgotten (its rows in click_segments dropped once the
-- segment was counted to its end and its file deleted): every segment of
-- that journal up to it is counted whole. A copy of one that comes back
-- (a journal directory restored from a backup) must count nothing, where
-- a missing row would say "nothing counted yet". One row per journal,
-- and a journal is one run of one instance.
CREATE TABLE IF NOT EXISTS click_segments_forgotten (
    journal_id  BIGINT       NOT NULL,
    through_segment  BIGINT  NOT NULL,
    updated_at  DATETIME(3)  NOT NULL,
    PRIMARY KEY (journal_id)
) ENGINE=InnoDB;
