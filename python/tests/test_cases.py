"""launch(cases=...): a script keeps its own split. The job trains the listed cases or images of
the data folder and no other, and says in one line where the list is wrong."""

import os

import pytest

from minato_flink import LoaderError, launch


def test_should_train_only_the_listed_cases_every_sample_once(dataset):
    seen, cases = [], set()
    with launch(dataset, cases=["case_00004", "case_00001"], epochs=2, batch=1, patch=16) as loader:
        for _ in range(loader.epochs):
            assert len(loader) == 2
            for batch in loader:
                seen += [tuple(s) for s in batch.samples.tolist()]
                cases.update(batch.cases)
        assert loader._job.wait(60) == 0
        assert open(os.path.join(loader._job.run_dir, "cases.txt")).read() == "case_00004\ncase_00001\n"
    assert cases == {"1", "4"}  # the trace's and the batch's names: the case numbers
    assert sorted(seen) == [(e, i) for e in range(2) for i in range(2)]


def test_should_train_only_the_listed_images(images):
    listed = ["class_00/" + sorted(os.listdir(images / "class_00"))[0],
              "class_02/" + sorted(os.listdir(images / "class_02"))[1]]
    names = set()
    with launch(str(images), cases=listed, batch=2, patch=32,
                extra_args=["--workload", "images"]) as loader:
        for batch in loader:
            names.update(batch.cases)
        assert loader._job.wait(60) == 0
    assert names == set(listed)


def test_should_stop_in_one_line_naming_the_list_and_the_line_of_a_case_not_in_the_folder(
        dataset):
    with pytest.raises(LoaderError) as raised:
        with launch(dataset, cases=["case_00000", "case_00099"], patch=16) as loader:
            next(iter(loader))
    message = str(raised.value)
    assert "\n" not in message
    assert f"cases.txt: line 2: case_00099 is not in {dataset}" in message


@pytest.mark.parametrize("cases, error", [
    ("case_00001", TypeError),
    ([], ValueError),
    (["case_00001\ncase_00002"], ValueError),
    ([" case_00001"], ValueError),
    ([3], ValueError),
])
def test_should_refuse_a_list_that_is_not_one_before_starting_the_job(dataset, cases, error):
    with pytest.raises(error, match="cases="):
        launch(dataset, cases=cases)


def test_should_refuse_cases_beside_a_python_dataset():
    with pytest.raises(ValueError, match="a dataset= chooses its own"):
        launch(dataset=[1, 2, 3], cases=["case_00001"])
