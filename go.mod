module petstore

go 1.25
