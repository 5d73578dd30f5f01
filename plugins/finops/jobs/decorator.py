"""`@training_job(...)`: the TaskFlow form of TrainingJobOperator.

    @training_job(candidates="warehouse", provider="aws-main", dry_run=False,
                  spec={"team": "ml", "project": "vision", "steps": 36_000, ...})
    def resnet(lr: float) -> dict:
        return {"name": "resnet", "run": {"module": "train", "args": ["--lr", str(lr)]}}

    resnet(lr=0.1)  # in a DAG: a deferrable training-job task

The function returns the job spec, or the part of it that varies per call, merged over the
decorator's `spec=`; its arguments may be XComArgs or templates like any task's. It runs at
every step of the task (first plan, each trigger event), so it must be cheap and return the
same spec each time. Every other argument is TrainingJobOperator's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from airflow.sdk.bases.decorator import DecoratedOperator, TaskDecorator, task_decorator_factory

from finops.jobs.operator import TrainingJobOperator
from finops.jobs.spec import JobSpecError


class _TrainingJobDecoratedOperator(DecoratedOperator, TrainingJobOperator):
    custom_operator_name = "@training_job"
    template_fields: Sequence[str] = (
        *DecoratedOperator.template_fields,
        *TrainingJobOperator.template_fields,
    )
    template_fields_renderers = DecoratedOperator.template_fields_renderers

    def __init__(self, *, spec: dict[str, Any] | str | None = None, **kwargs: Any) -> None:
        super().__init__(spec=spec if spec is not None else {}, **kwargs)

    def _spec_data(self) -> Any:
        base = self._json(self.spec) or {}
        made = self.python_callable(*self.op_args, **self.op_kwargs)
        if made is None:
            made = {}
        if not isinstance(base, dict) or not isinstance(made, dict):
            raise JobSpecError(
                f"task {self.task_id}: job spec: (root): @training_job's spec= and its function's return "
                f"value must be mappings, got {type(base).__name__} and {type(made).__name__}"
            )
        return {**base, **made}


def training_job(python_callable: Callable[..., Any] | None = None, **kwargs: Any) -> TaskDecorator:
    """Wrap a function returning a job spec into a TrainingJobOperator task (module docstring)."""
    return task_decorator_factory(
        python_callable=python_callable, decorated_operator_class=_TrainingJobDecoratedOperator, **kwargs
    )
