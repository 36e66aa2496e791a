-- click_journals says, per instance journal, up to when its clicks are all
-- counted (caught_up_at); the stats API's as_of is the earliest of those
-- heard from recently. A journal drained at shutdown is removed.
CREATE TABLE IF NOT EXISTS click_journals (
    journal_id    BIGINT       NOT NULL,
    node_id       INT          NOT NULL,
    caught_up_at  DATETIME(3)  NOT NULL,
    updated_at    DATETIME(3)  NOT NULL,
    PRIMARY KEY (journal_id)
) ENGINE=InnoDB;
