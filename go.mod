module github.com/krabka/krabka-coord

go 1.26
