"""The convergence ladder (``--xai-convergence``): each explainer at a ladder of budgets of model
evaluations on the games of :data:`pytest_xai.convergence.CASES`, its error against their exact
Shapley values per evaluation spent.  Collected by the plugin with that option only; ids read
``ladder[gaussian_linear_rho50-shap_kernel]`` (the games family's ``convergence`` check is another
thing: a pass/fail rate test of an estimator).
"""


def ladder(xai_case_name, xai_explainer, xai_case, xai_convergence):
    """Error against the exact Shapley values at each budget of model evaluations (Muschalik et al. 2024)."""
    xai_convergence(xai_explainer, xai_case(xai_case_name))


# function attributes, which pytest reads and mypy does not model
ladder.__test__ = True  # type: ignore[attr-defined]  # collected whatever the user's python_functions pattern is
ladder.xai_ladder = True  # type: ignore[attr-defined]  # the plugin parametrises over the ladder's cases
