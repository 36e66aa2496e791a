-- click_visitors holds each link's unique-visitor sketch (a HyperLogLog
-- of the visitor hashes, package analytics) per UTC hour and per UTC
-- day. A batch merges its visitors in: merging is idempotent, and the
-- batch's transaction is the one that counts its clicks, so a sketch
-- takes each batch exactly once like the counts do.
CREATE TABLE IF NOT EXISTS click_visitors (
    link_id  BIGINT        NOT NULL,
    period   ENUM('hour', 'day') NOT NULL,
    start    DATETIME      NOT NULL,
    sketch   BLOB          NOT NULL,
    PRIMARY KEY (link_id, period, start)
) ENGINE=InnoDB;
