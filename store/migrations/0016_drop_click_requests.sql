-- click_requests (one row per click) cost MariaDB about 5 µs a click to
-- insert and as much to purge: replaced by click_request_sets, one row per
-- shipped batch (0017).
DROP TABLE IF EXISTS click_requests;
