"""The access family: `request_directory_access` (`tools`), its single-use tokens (`requests`) and their table
(`migrations`); `fermix sandbox confirm|deny` settle the tokens."""
