-- node_leases gives each Snowflake node ID to one live instance at a time.
-- An instance renews its lease while it runs; another instance may claim
-- the node ID only once the lease has expired. reserved_ms is the highest
-- time (Unix ms) an ID of this node may carry so far: a restarted instance
-- issues no ID at or below it, so a clock stepped back cannot repeat codes.
CREATE TABLE IF NOT EXISTS node_leases (
    node_id      INT           NOT NULL,
    owner        VARCHAR(255)  NOT NULL,
    expires_at   DATETIME(3)   NOT NULL,
    reserved_ms  BIGINT        NOT NULL DEFAULT 0,
    PRIMARY KEY (node_id)
) ENGINE=InnoDB;
