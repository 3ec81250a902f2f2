ERR syntax error

