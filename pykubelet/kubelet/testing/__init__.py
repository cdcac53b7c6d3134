"""Test doubles of the kubelet side's seams (as cri-api's pkg/apis/testing): shared by the
unit tests of SyncPod, PLEG, the prober and, later, the control plane's node tests."""
