-- idempotency_keys remembers which link a create with an Idempotency-Key
-- made, so a retried POST returns the first answer instead of a second
-- link. request_hash tells a retry from a different request reusing a key.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    idem_key      VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    request_hash  CHAR(64)     CHARACTER SET ascii NOT NULL,
    code          VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at    DATETIME(3)  NOT NULL,
    expires_at    DATETIME(3)  NOT NULL,
    PRIMARY KEY (idem_key),
    KEY idempotency_keys_expires (expires_at)
) ENGINE=InnoDB;
