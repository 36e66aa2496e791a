module shortener/deploy

go 1.26.0

require shortener v0.0.0

replace shortener => ../
