package 'mosquitto'

Env.set(self, 'LIBS_BROKER_ENDPOINT', "mqtt://#{node['ip']}:1883")
