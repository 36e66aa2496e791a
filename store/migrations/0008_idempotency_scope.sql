-- An Idempotency-Key belongs to whoever sent it: scope is the hash of the
-- API key's owner identity or of the client address, so one client can
-- neither replay nor squat another's key. The key stays readable.
ALTER TABLE idempotency_keys
    ADD COLUMN scope CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '' FIRST,
    DROP PRIMARY KEY,
    ADD PRIMARY KEY (scope, idem_key);
