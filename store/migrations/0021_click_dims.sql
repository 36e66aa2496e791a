-- click_dims counts each link's clicks per UTC day by the value of one
-- analytics dimension: country (ISO 3166-1 alpha-2; ZZ unknown), browser,
-- os and device (package analytics' names; "unknown" for a click made
-- with analytics off). Every click adds one to each of the four, so each
-- dimension's values sum to the day's clicks. Days, like referrers: a
-- value multiplies rows, and these are read over days and weeks.
CREATE TABLE IF NOT EXISTS click_dims (
    link_id  BIGINT        NOT NULL,
    day      DATE          NOT NULL,
    dim      ENUM('country', 'browser', 'os', 'device') NOT NULL,
    value    VARCHAR(32)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    clicks   INT UNSIGNED  NOT NULL,
    PRIMARY KEY (link_id, day, dim, value)
) ENGINE=InnoDB;
