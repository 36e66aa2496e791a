-- An admin key may manage every link, not only those it created.
ALTER TABLE api_keys ADD COLUMN admin BOOLEAN NOT NULL DEFAULT FALSE;
