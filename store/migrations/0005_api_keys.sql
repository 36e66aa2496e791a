-- api_keys authorise management calls. Only a SHA-256 of each key is
-- stored: a leaked table does not leak the keys.
CREATE TABLE IF NOT EXISTS api_keys (
    id          BIGINT        NOT NULL AUTO_INCREMENT,
    name        VARCHAR(100)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    key_hash    CHAR(64)      CHARACTER SET ascii NOT NULL,
    created_at  DATETIME(3)   NOT NULL,
    revoked_at  DATETIME(3)   NULL,
    PRIMARY KEY (id),
    UNIQUE KEY api_keys_name (name),
    UNIQUE KEY api_keys_hash (key_hash)
) ENGINE=InnoDB;
