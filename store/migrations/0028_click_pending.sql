-- click_pending holds the clicks of links clicked too rarely to share a
-- batch's count rows: one row a click, keyed by link first so a link's
-- pending clicks are read together. A link clicked fewer than
-- denseClicks times in a shipped batch (store/clickfold.go) made five
-- count rows for each click (its hour, referrer, dimension set and two
-- visitor sketches), each an upsert at a random place; here it makes
-- one insert. FoldClicks moves the clicks of ended hours into those
-- count rows, a link's whole hour at once, and deletes them in the same
-- transaction. Readers add what is still pending to the count rows.
-- The key after link and time is the batch that shipped the click and
-- its place in it, so a batch applied twice cannot add a row twice.
CREATE TABLE IF NOT EXISTS click_pending (
    link_id     BIGINT            NOT NULL,
    at          DATETIME          NOT NULL,
    journal_id  BIGINT            NOT NULL,
    segment     BIGINT            NOT NULL,
    position    BIGINT            NOT NULL,
    seq         INT UNSIGNED      NOT NULL,
    bot         BOOLEAN           NOT NULL,
    referrer    VARCHAR(255)      CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    country     VARCHAR(32)       CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    browser     VARCHAR(32)       CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    os          VARCHAR(32)       CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    device      VARCHAR(32)       CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    visitor     BIGINT UNSIGNED   NOT NULL,
    PRIMARY KEY (link_id, at, journal_id, segment, position, seq)
) ENGINE=InnoDB;
