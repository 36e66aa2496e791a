-- click_request_lock has one row, locked by every batch that carries
-- request IDs for the length of its transaction: two batches whose
-- request ranges overlap must not both read the sets before the other's
-- is written. Batches are a few a second, each a few milliseconds.
CREATE TABLE IF NOT EXISTS click_request_lock (
    id  TINYINT  NOT NULL,
    PRIMARY KEY (id)
) ENGINE=InnoDB;
