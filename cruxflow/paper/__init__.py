"""The paper's reporting: Tables 1-3, figures, judge-vs-human agreement."""
