c = get_config()  # noqa: F821 (nbgrader injects get_config)
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError"}
