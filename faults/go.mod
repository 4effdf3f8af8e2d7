module petstore/faults

go 1.22
