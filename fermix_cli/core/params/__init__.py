"""Tool and config input models, declared with pydantic's API and validated by fermix's own strict layer.

`model` holds `Params` and the declaration helpers; `fieldtypes` compiles annotations into checks
(`check`, `compound`); `schema` derives the published JSON schema. Import the public names from here.
"""

from .fieldtypes import AfterValidator, ConfigDict, Field, FieldInfo
from .model import Params, ValidationError, model_validator

__all__ = [
    "AfterValidator",
    "ConfigDict",
    "Field",
    "FieldInfo",
    "Params",
    "ValidationError",
    "model_validator",
]
