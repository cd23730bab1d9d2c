"""Errors raised while reading Kubernetes objects into the model."""


class ModelError(ValueError):
    """A Kubernetes object (or part of one) that cannot be understood.

    The message names the object and the field, so that one bad pod or node
    is reported and skipped instead of stopping a whole run.
    """

    def __init__(self, message: str, *, obj: str = "", field: str = "") -> None:
        self.obj = obj
        self.field = field
        where = " ".join(part for part in (obj, field and f"field {field}") if part)
        super().__init__(f"{where}: {message}" if where else message)
