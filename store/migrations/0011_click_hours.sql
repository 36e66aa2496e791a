-- click_hours counts each link's clicks per UTC hour, and the bots among
-- them (browsers = clicks - bots). One row per link and hour with a click:
-- a link clicked every hour for a year is 8,760 rows, however many clicks.
-- No foreign key: deleting a link (deleted_at) keeps its counts.
CREATE TABLE IF NOT EXISTS click_hours (
    link_id  BIGINT        NOT NULL,
    hour     DATETIME      NOT NULL,
    clicks   INT UNSIGNED  NOT NULL,
    bots     INT UNSIGNED  NOT NULL,
    PRIMARY KEY (link_id, hour)
) ENGINE=InnoDB;
