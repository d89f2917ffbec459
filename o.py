def f():
    a()
    if x:
        b()
    log(2)
    c()
    log(4)
