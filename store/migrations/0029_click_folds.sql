-- click_folds says through which hour every pending click has been
-- folded: an instance folds when the hour before the current one is past
-- it, and the first to finish moves it on.
CREATE TABLE IF NOT EXISTS click_folds (
    id         TINYINT   NOT NULL PRIMARY KEY,
    folded_to  DATETIME  NOT NULL
) ENGINE=InnoDB;
