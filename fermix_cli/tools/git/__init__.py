"""The git family: `git_read` and `git_write` (`tools`), their argument rules (`args`) and hardened runner (`run`)."""
