module timerkit/go-reference

go 1.27
