-- What an owner can change about a link after creating it. updated_at is
-- the last edit (NULL: never edited); disabled keeps the link but answers
-- 410 until it is enabled again; tags are the owner's labels, stored as
-- " a b c " (each tag between spaces, sorted) so that a tag filter is
-- LIKE '% tag %' over the owner's links (links_owner) with no join on the
-- lookup path; max_visits ends the link after that many counted
-- redirects (NULL: no limit); password_hash is a bcrypt hash (NULL: no
-- password).
ALTER TABLE links
    ADD COLUMN updated_at    DATETIME(3)   NULL,
    ADD COLUMN disabled      BOOLEAN       NOT NULL DEFAULT FALSE,
    ADD COLUMN tags          VARCHAR(1024) CHARACTER SET ascii COLLATE ascii_bin NULL,
    ADD COLUMN max_visits    BIGINT        NULL,
    ADD COLUMN password_hash VARCHAR(255)  CHARACTER SET ascii COLLATE ascii_bin NULL;
