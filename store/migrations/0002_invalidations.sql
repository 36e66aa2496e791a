-- invalidations is the outbox of cache invalidations: a delete commits its
-- row here in the same transaction as the link's deleted_at, so an
-- invalidation that cannot reach Redis during an outage is replayed when
-- Redis returns.
CREATE TABLE IF NOT EXISTS invalidations (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    code        VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at  DATETIME(3)  NOT NULL,
    PRIMARY KEY (id),
    KEY invalidations_code (code)
) ENGINE=InnoDB;
