module petstore

go 1.24
