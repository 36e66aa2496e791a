-- owner is the hash of the API key that created a link (NULL: anonymous).
-- Deletes, stats and listings are the owner's; links_owner serves a key's
-- listing, newest first, by cursor on id.
ALTER TABLE links
    ADD COLUMN owner CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
    ADD KEY links_owner (owner, id);
