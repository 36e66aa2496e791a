-- Every batch that takes click_request_lock's row now also changes it
-- (turns = turns + 1). On a Galera cluster a row lock is one node's
-- alone; only a row a transaction changes is certified against the other
-- nodes' transactions, so two batches with the same requests shipped
-- through different nodes conflict there and one of them runs again
-- (docs/design.md, "Source of truth on Galera"). An unchanged row
-- (id = id) is not part of the writeset.
ALTER TABLE click_request_lock ADD COLUMN turns BIGINT UNSIGNED NOT NULL DEFAULT 0;
