-- click_requests remembers the proxied requests whose clicks are counted:
-- nginx's random request ID and when nginx passed the request on (Unix
-- ms, nginx's clock), both the same on every instance nginx tries for one
-- request. A click whose request is already here is a retry's second copy
-- and is not counted again. Time first in the key: inserts land at the
-- B-tree's right edge and the purge (store.PurgeClickRequests) deletes a
-- range from its left, so the table stays as small as the horizon.
CREATE TABLE IF NOT EXISTS click_requests (
    requested_at  BIGINT      NOT NULL,
    request_id    BINARY(16)  NOT NULL,
    PRIMARY KEY (requested_at, request_id)
) ENGINE=InnoDB;
