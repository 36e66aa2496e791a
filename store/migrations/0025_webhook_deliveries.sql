-- webhook_deliveries is the outbox of webhooks: one row per event and
-- subscribed webhook, inserted in the transaction that made the change
-- (a link's create, edit or delete, a click batch's count), deleted once
-- the receiver answered 2xx or the event is a day old. event_id is the
-- event's (the same for every webhook and every attempt); data is the
-- event's link or counts (store/webhooks.go). A sender claims due rows
-- with SELECT ... FOR UPDATE SKIP LOCKED and marks them claimed until
-- claimed_until, under a claim of its own, so no two senders attempt
-- one delivery at once, and one that died releases its claims when
-- they run out. Times are the database's clock but event_at, the
-- change's own.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id             BIGINT        NOT NULL AUTO_INCREMENT,
    webhook_id     VARCHAR(32)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    event_id       VARCHAR(64)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    type           VARCHAR(32)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    event_at       DATETIME(3)   NOT NULL,
    data           TEXT          CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    created_at     DATETIME(3)   NOT NULL,
    next_at        DATETIME(3)   NOT NULL,
    attempts       INT           NOT NULL DEFAULT 0,
    claim          VARCHAR(64)   CHARACTER SET ascii COLLATE ascii_bin NULL,
    claimed_until  DATETIME(3)   NULL,
    last_error     VARCHAR(255)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    PRIMARY KEY (id),
    UNIQUE KEY webhook_deliveries_event (webhook_id, event_id),
    KEY webhook_deliveries_due (next_at)
) ENGINE=InnoDB;
