"""`kubeberth capacity`: how many more copies of a pod (a workload's template, a gang) a cluster
takes now, where, and what stops the next one, by the scheduler simulate runs. template.py reads
the template, copies.py names the copies, answer.py answers (the exact path over session.py's
scheduler, or per_node.py's count; verify.py asks simulate), result.py holds the question's
options and the answer, command.py is the command."""

from .answer import capacity
from .result import Answer, Options
from .template import Template, read_template

__all__ = ["Answer", "Options", "Template", "capacity", "read_template"]
