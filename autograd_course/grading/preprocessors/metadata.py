"""nbgrader's ``CheckCellMetadata``, with the schema of nbgrader's cell metadata checked once.

nbgrader's validator (``nbgrader.nbgraderformat.MetadataValidator``) reads its schemas from
disk each time it is made, and validates each cell's metadata with ``jsonschema.validate``,
which checks the schema itself before it checks the cell: nine tenths of 27 ms per notebook,
twice per submission (once in the sanitizers, once after the execution). Here the validator
is made once per process, and its schema's validator too, with ``check_schema`` run once;
everything else is nbgrader's own: its version checks, its checks of grade ids, points and
cell types, the error ``jsonschema.validate`` would raise (its ``best_match``), and the
preprocessor's message when a notebook fails.
"""

from __future__ import annotations

import functools
import traceback

import jsonschema
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import NbGraderPreprocessor


class _SchemaCheckedOnce(BaseMetadataValidator):
    """nbgrader's check of one cell's metadata against its JSON schema, with the schema's
    validator made (and the schema checked) once; nbgrader's own method where the cell's
    schema version is not this one (its errors say so)."""

    def validate_cell(self, cell) -> None:
        meta = cell.metadata.get("nbgrader")
        if not isinstance(meta, dict) or meta.get("schema_version", 0) != self.schema_version:
            super().validate_cell(cell)
            return
        error = jsonschema.exceptions.best_match(self._schema_validator.iter_errors(meta))
        if error is not None:
            raise error

    @functools.cached_property
    def _schema_validator(self):
        kind = jsonschema.validators.validator_for(self.schema)
        kind.check_schema(self.schema)
        return kind(self.schema)


class _Validator(MetadataValidator, _SchemaCheckedOnce):
    """nbgrader's validator (its method order puts :class:`_SchemaCheckedOnce` right after
    its own ``validate_cell``, which calls it through ``super()``)."""


@functools.cache
def _validator() -> _Validator:
    return _Validator()


class CheckCellMetadata(NbGraderPreprocessor):
    """Check that the nbgrader metadata of every cell is valid (nbgrader's check, faster)."""

    def preprocess(self, nb, resources):
        try:
            _validator().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            message = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(message)
            raise ValidationError(message) from None
        return nb, resources
