-- links holds every short link. The code is unique and compared byte for
-- byte (ascii_bin), so "abc" and "ABC" are different links.
CREATE TABLE IF NOT EXISTS links (
    id          BIGINT        NOT NULL,
    code        VARCHAR(64)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    url         VARCHAR(2048) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    redirect    SMALLINT      NOT NULL DEFAULT 302,
    created_at  DATETIME(3)   NOT NULL,
    expires_at  DATETIME(3)   NULL,
    deleted_at  DATETIME(3)   NULL,
    PRIMARY KEY (id),
    UNIQUE KEY links_code (code)
) ENGINE=InnoDB;
