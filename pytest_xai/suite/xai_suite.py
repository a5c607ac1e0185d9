"""The built-in battery: one test per check, parametrised over (case, explainer).

Collected by the plugin whenever ``--xai-explainer`` (or ini ``xai_explainers``) is given; ids read
``symmetry[cough_and_fever-shap_kernel]``.  Each test builds its case, runs the explainer through
the contract (time limit, validation) and scores the explanation with the check the case declares.
"""

from pytest_xai import cases, checks


def _suite_test(name: str):
    def test(xai_case_name, xai_explainer, xai_case, xai_explain, xai_check):
        case = xai_case(xai_case_name)
        xai_check(name, xai_explain(xai_explainer, case), case, explainer=xai_explainer)

    test.__name__ = test.__qualname__ = name
    test.__doc__ = checks.CHECKS[name].doc
    # function attributes, which pytest reads and mypy does not model
    test.__test__ = True  # type: ignore[attr-defined]  # collected whatever the user's python_functions pattern is
    test.xai_check = name  # type: ignore[attr-defined]  # the plugin parametrises over the check's cases
    return test


for _name in dict.fromkeys(check for info in cases.infos() for check in info.checks):
    globals()[_name] = _suite_test(_name)
