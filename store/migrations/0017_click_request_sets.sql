-- click_request_sets remembers the proxied requests whose clicks are
-- counted, one row per shipped batch: the batch's requests (nginx's random
-- request ID and when nginx passed the request on, Unix ms by nginx's
-- clock, both the same on every instance nginx tries for one request),
-- sorted and packed 24 bytes each into ids, and the range of their times.
-- A batch reads the sets whose range overlaps its own (under
-- click_request_lock) and does not count a click whose request is in one:
-- it is a retry's second copy. A row per batch, not per click, so a click
-- costs MariaDB 24 bytes of a blob instead of a B-tree insert and a
-- delete. Keyed by the range's end, so the purge (store.PurgeClickRequests)
-- deletes a range of rows from the left.
CREATE TABLE IF NOT EXISTS click_request_sets (
    requested_to    BIGINT      NOT NULL,
    journal_id      BIGINT      NOT NULL,
    segment         BIGINT      NOT NULL,
    position        BIGINT      NOT NULL,
    requested_from  BIGINT      NOT NULL,
    ids             MEDIUMBLOB  NOT NULL,
    PRIMARY KEY (requested_to, journal_id, segment, position)
) ENGINE=InnoDB;
