-- visitor_keys holds package analytics' daily visitor key: one random
-- key per UTC day, the same for every instance (the first to ask creates
-- it), under which a click's visitor is hashed from its address and
-- User-Agent. A key is deleted two days after its day ends
-- (Store.VisitorKey), so that no stored visitor hash can be traced back
-- to an address once its day is over: without the key, there is nothing
-- to test guessed addresses against.
CREATE TABLE IF NOT EXISTS visitor_keys (
    day   DATE        NOT NULL,
    vkey  BINARY(32)  NOT NULL,
    PRIMARY KEY (day)
) ENGINE=InnoDB;
