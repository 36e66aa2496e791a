-- click_referrers counts each link's clicks per UTC day and referrer host
-- ('' for none). Days, not hours: referrer hosts multiply rows, and "top
-- referrers" is read over days and weeks.
CREATE TABLE IF NOT EXISTS click_referrers (
    link_id  BIGINT        NOT NULL,
    day      DATE          NOT NULL,
    host     VARCHAR(255)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    clicks   INT UNSIGNED  NOT NULL,
    PRIMARY KEY (link_id, day, host)
) ENGINE=InnoDB;
