"""Python client of the sampler service (sampler.v1.SamplerService).

    import sampler_client
    with sampler_client.Client("localhost:50051") as client:
        s = client.gamma(shape=2.5, size=1000, seed=42)
        s.values            # numpy.ndarray of 1000 float64 samples
        s.seed              # 42 (the server picks and echoes one when omitted)
        s.contract_version  # the randomness contract version that made them
"""

from sampler_client.client import CONTRACT_METADATA_KEY, Client, Pmf, Sample, unpack_boards

__all__ = ["CONTRACT_METADATA_KEY", "Client", "Pmf", "Sample", "unpack_boards"]
__version__ = "0.1.0"
