# The two commands the README promises. Both bootstrap what they need.
.PHONY: demo test
demo:
	bash scripts/demo
test:
	bash scripts/test
