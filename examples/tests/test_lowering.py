import unittest
from unittest import mock

import torch
from executorch.backends.qualcomm.utils.utils import to_edge_transform_and_lower_to_qnn

from lowering_utils import lower_one


class TinyAdd(torch.nn.Module):
    def forward(self, x, y):
        return x + y


class TestLowering(unittest.TestCase):
    def setUp(self):
        self.model = TinyAdd().eval()
        self.inputs = (torch.ones(2, 2), torch.ones(2, 2))
        self.specs = []

    @mock.patch("lowering_utils.to_edge_transform_and_lower_to_qnn")
    def test_lower_one_delegates(self, lower):
        lower_one(self.model, self.inputs, self.specs)
        lower.assert_called_once()

    def test_methods(self):
        edge = to_edge_transform_and_lower_to_qnn(self.model, self.inputs, self.specs)
        self.assertEqual(list(edge.methods), ["forward"])
