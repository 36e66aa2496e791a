-- webhooks are API keys' subscriptions to the events of their links
-- (package webhook sends them). owner is the key's hash, as links.owner:
-- a key's webhooks are found by it when one of its links changes. events
-- is the set subscribed to. The secret signs every delivery, so it is
-- kept as it was made (the sender needs it), and shown only once, to the
-- key that made it.
CREATE TABLE IF NOT EXISTS webhooks (
    id          VARCHAR(32)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    owner       CHAR(64)      CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    url         VARCHAR(2048) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    events      SET('link.created', 'link.updated', 'link.deleted', 'link.clicked') NOT NULL,
    secret      VARCHAR(64)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at  DATETIME(3)   NOT NULL,
    PRIMARY KEY (id),
    KEY webhooks_owner (owner)
) ENGINE=InnoDB;
