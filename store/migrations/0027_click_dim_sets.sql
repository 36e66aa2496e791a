-- click_dim_sets counts each link's clicks per UTC day by all four
-- analytics dimensions at once: one row per combination of country,
-- browser, os and device seen that day. click_dims kept a row per
-- dimension and value, so every click of a link not clicked yet that day
-- inserted four rows; with a million links clicked uniformly that was
-- half of what MySQL did per redirect (make bench, docs/bench/). Here
-- such a click inserts one. A link clicked from many kinds of client has
-- more rows than before (its distinct combinations, not the sum of its
-- distinct values), which is the price. Each dimension's counts are the
-- sums over the other three. click_dims keeps the days counted before
-- this table; readers add both (store/clickdims.go).
CREATE TABLE IF NOT EXISTS click_dim_sets (
    link_id  BIGINT        NOT NULL,
    day      DATE          NOT NULL,
    country  VARCHAR(32)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    browser  VARCHAR(32)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    os       VARCHAR(32)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    device   VARCHAR(32)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    clicks   INT UNSIGNED  NOT NULL,
    PRIMARY KEY (link_id, day, country, browser, os, device)
) ENGINE=InnoDB;
